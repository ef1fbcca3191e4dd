//go:build race

package tui

// raceDetector is true under -race, which slows rendering several times
// over: timing budgets are not checked then.
const raceDetector = true
