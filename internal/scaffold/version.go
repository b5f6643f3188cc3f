package scaffold

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// ErrUnknownBuild means a binary does not know the commit it was built from
// (or its time), so it cannot name its own version.
var ErrUnknownBuild = errors.New("this binary does not know the commit it was built from, or that commit's time")

// describedRevision is the revision at the end of `git describe --always
// --abbrev=12` output: a bare revision, or TAG-N-gREVISION.
var describedRevision = regexp.MustCompile(`(?:^|-[0-9]+-g)([0-9a-f]{12,40})$`)

// PaddockVersion is the module version of the Paddock source a binary was
// built from. commit is what `make build` links in (`git describe --always
// --dirty --abbrev=12`: a revision, TAG-N-gREVISION or a tag, "-dirty" when
// the checkout had uncommitted changes); when is the commit's time. A
// release tag is its own version; any other commit is the pseudo-version
// v0.0.0-<UTC yyyymmddhhmmss>-<12 hex>, which Go accepts for any commit of
// a v0 or v1 module whatever tags precede it.
func PaddockVersion(commit string, when time.Time) (string, error) {
	if commit == "" {
		return "", ErrUnknownBuild
	}
	if strings.HasSuffix(commit, "-dirty") {
		return "", fmt.Errorf("this binary was built from a checkout of %s with uncommitted changes: no published version of Paddock holds its code", strings.TrimSuffix(commit, "-dirty"))
	}
	m := describedRevision.FindStringSubmatch(commit)
	if m == nil {
		// Not a revision: the release tag the commit carries, if it is one.
		if !semver.IsValid(commit) {
			return "", fmt.Errorf("this binary's commit %q names no revision", commit)
		}
		if err := module.Check(PaddockModule, commit); err != nil || semver.Canonical(commit) != commit {
			return "", fmt.Errorf("this binary was built from tag %s, which is not a version of %s", commit, PaddockModule)
		}
		return commit, nil
	}
	if when.IsZero() {
		return "", fmt.Errorf("%w: it knows commit %s, not its time", ErrUnknownBuild, m[1][:12])
	}
	return PseudoVersion(when, m[1])
}

// PseudoVersion is the Go pseudo-version of a commit with no tag of its own:
// v0.0.0-<commit time, UTC, yyyymmddhhmmss>-<the revision's first 12 hex digits>.
func PseudoVersion(when time.Time, revision string) (string, error) {
	if len(revision) < 12 || strings.Trim(revision, "0123456789abcdef") != "" {
		return "", fmt.Errorf("revision %q: want at least 12 lower-case hex digits", revision)
	}
	return module.PseudoVersion("", "", when.UTC(), revision[:12]), nil
}
