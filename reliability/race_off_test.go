//go:build !race

package reliability

const raceEnabled = false

// raceFactor stretches the slack of a timing bound where the race
// detector's overhead, not the library, sets it.
const raceFactor = 1
