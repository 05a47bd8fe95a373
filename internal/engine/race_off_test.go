//go:build !race

package engine

import "testing"

const RaceEnabled = false

func skipMegabytesUnderRace(*testing.T) {}
