package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/mcpsafe/mcpsafe/journal"
)

// journalOpen opens and closes the journal at FILE, as a server's start
// and stop do, and prints the CPU time and the bytes allocated that took.
// With -legacy-head it first rewrites the head file as it was before head
// files said where Open should start reading: Open then reads the whole
// set, which is what every Open did before (and it writes the hint again).
func journalOpen(args []string) error {
	fl := flag.NewFlagSet("journal-open", flag.ExitOnError)
	legacy := fl.Bool("legacy-head", false, "drop the head file's open hint first: Open reads the whole journal")
	fl.Parse(args)
	if fl.NArg() != 1 {
		return errors.New("name the journal")
	}
	path := fl.Arg(0)
	if *legacy {
		if err := legacyHead(path); err != nil {
			return err
		}
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	j, err := journal.Open(path)
	if err != nil {
		return err
	}
	if err := j.Close(); err != nil {
		return err
	}
	cpu := cpuTime() - c0
	runtime.ReadMemStats(&m1)
	fmt.Printf("cpu_s=%.4f alloc_bytes=%d mallocs=%d\n", cpu.Seconds(), m1.TotalAlloc-m0.TotalAlloc, m1.Mallocs-m0.Mallocs)
	return nil
}

// legacyHead rewrites the head file of the journal at path without its
// open hint, in the same fixed-size form.
func legacyHead(path string) error {
	h, err := journal.ReadHead(path)
	if err != nil {
		return err
	}
	if h == nil {
		return errors.New("the journal has no head file")
	}
	b, err := json.Marshal(struct {
		Seq  uint64 `json:"seq"`
		Hash string `json:"hash"`
	}{h.Seq, h.Hash})
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path + journal.HeadSuffix)
	if err != nil {
		return err
	}
	out := bytes.Repeat([]byte{' '}, len(old))
	copy(out, b)
	out[len(out)-1] = '\n'
	return os.WriteFile(path+journal.HeadSuffix, out, 0o600)
}
