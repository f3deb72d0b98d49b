//go:build !race

package clitest

// raceEnabled: the tests run without -race.
const raceEnabled = false
