//go:build race

package drill

// raceEnabled slows the compressed scenarios down under the race
// detector, which makes every question several times dearer.
const raceEnabled = true
