package main

import (
	"slices"
	"testing"

	"github.com/mcpsafe/mcpsafe/mutants"
)

// TestBaselineCoversEachCommand: the unmutated commands are merged per set
// of packages with the union of the -run filters; a mutant without a filter
// makes its set run whole, and a filter with a subtest level runs alone.
func TestBaselineCoversEachCommand(t *testing.T) {
	ms := []mutants.Mutant{
		{Packages: []string{"./proxy"}, Run: "TestA|TestB"},
		{Packages: []string{"./proxy"}, Run: "TestB|TestC"},
		{Packages: []string{"./proxy", "."}, Run: "TestA"},
		{Packages: []string{"."}},
		{Packages: []string{"."}, Run: "TestD"},
		{Packages: []string{"./ledger"}, Run: "TestConformance/redis"},
		{Packages: []string{"./ledger"}, Run: "TestConformance/redis"},
		{Packages: []string{"./ledger"}, Run: "Test(E|F)"},
	}
	got := baseline(ms)
	want := []command{
		{[]string{"./proxy"}, "TestA|TestB|TestC"},
		{[]string{"./proxy", "."}, "TestA"},
		{[]string{"."}, ""},
		{[]string{"./ledger"}, "Test(E|F)"},
		{[]string{"./ledger"}, "TestConformance/redis"},
	}
	if !slices.EqualFunc(got, want, func(a, b command) bool { return slices.Equal(a.pkgs, b.pkgs) && a.run == b.run }) {
		t.Errorf("baseline:\n got %v\nwant %v", got, want)
	}
}
