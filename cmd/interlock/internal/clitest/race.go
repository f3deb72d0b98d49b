//go:build race

package clitest

// raceEnabled: the tests run with -race, so the binary is built with it too.
const raceEnabled = true
