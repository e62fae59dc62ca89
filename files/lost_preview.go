package files

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/safefs"
)

// What the local approval page shows of a file about to be deleted: its
// first lines when it is text, "binary, 12.3 KB" otherwise. The model never
// sees it (plan.PageOnly): it is the content the model may not read.
const (
	lostHeadBytes = 4096 // read at most this much of the file
	lostHeadLines = 12
	lostLineRunes = 200
)

// lostPreview reads the head of the inspected file i, if the file at its
// path is still that file (readHead checks), and describes it; nil when it
// cannot be read as that file (the page then shows nothing more).
func lostPreview(i safefs.Info) *plan.PageOnly {
	head, ok := readHead(i, lostHeadBytes)
	if !ok {
		return nil
	}
	po := describeLost(prompt.Quote(i.Rel), head, i.Size)
	po.Modified = i.ModTime
	return po
}

// describeLost words what would be lost of a file of size bytes whose
// first bytes are head.
func describeLost(name string, head []byte, size int64) *plan.PageOnly {
	title := "What would be lost: " + name
	switch {
	case size == 0:
		return &plan.PageOnly{Title: title, Lines: []string{"(an empty file)"}}
	case !isText(head, size):
		return &plan.PageOnly{Title: title, Lines: []string{"binary, " + sizeShort(size)}}
	}
	text := string(head)
	cut := int64(len(head)) < size
	if cut { // a line cut by the read is not shown as if whole
		if nl := strings.LastIndexByte(text, '\n'); nl >= 0 {
			text = text[:nl+1]
		}
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []string
	shownBytes := 0
	for n, l := range lines {
		if n == lostHeadLines {
			break
		}
		shownBytes += len(l)
		l = strings.TrimSuffix(l, "\n")
		if utf8.RuneCountInString(l) > lostLineRunes {
			l = string([]rune(l)[:lostLineRunes]) + " …"
		}
		out = append(out, l)
	}
	if rest := size - int64(shownBytes); rest > 0 {
		out = append(out, fmt.Sprintf("… and %s more (%s in all)", sizeShort(rest), sizeShort(size)))
	}
	return &plan.PageOnly{Title: title + ", first lines", Lines: out}
}

// isText: no NUL byte, and valid UTF-8 (a rune cut at the end of a partial
// read aside).
func isText(head []byte, size int64) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	if int64(len(head)) < size {
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	return utf8.Valid(head)
}
