// Package pagetest clicks the approval page's buttons over plain HTTP, as
// a browser on the page would, for tests of the servers that use the page
// (the page's own rendering is tested in a real browser).
package pagetest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

var formRE = regexp.MustCompile(`name="form" value="([^"]+)"`)

// Open GETs link and returns the page's HTML and its form token ("" when
// the page offers no buttons any more).
func Open(link string) (html, form string, err error) {
	res, err := http.Get(link)
	if err != nil {
		return "", "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "", "", err
	}
	if res.StatusCode != http.StatusOK {
		return string(b), "", fmt.Errorf("GET %s: %s", link, res.Status)
	}
	if m := formRE.FindSubmatch(b); m != nil {
		form = string(m[1])
	}
	return string(b), form, nil
}

// Click submits decision ("approve" or "deny") with form from the page's
// own origin, and returns the status and the page that answered.
func Click(link, form, decision string) (int, string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequest(http.MethodPost, link, strings.NewReader(url.Values{"form": {form}, "decision": {decision}}.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// Decide opens link and clicks decision on it.
func Decide(link, decision string) error {
	_, form, err := Open(link)
	if err != nil {
		return err
	}
	if form == "" {
		return fmt.Errorf("the page at %s offers no decision", link)
	}
	code, body, err := Click(link, form, decision)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s on %s: %d %s", decision, link, code, body)
	}
	return nil
}
