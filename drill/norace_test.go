//go:build !race

package drill

const raceEnabled = false
