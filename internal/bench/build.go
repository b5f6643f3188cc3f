package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// BuildOf identifies the paddock binary at bin by asking it: the commit it
// was built from (`paddock version --commit`, which fails for a binary that
// does not know it) and the file's checksum. It never looks at the working
// directory: the numbers belong to the binary measured, whatever the
// checkout holds now.
func BuildOf(bin string) (*Build, error) {
	out, err := exec.Command(bin, "version", "--commit").Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("%s version --commit: %s", bin, msg)
	}
	commit := strings.TrimSpace(string(out))
	if commit == "" || strings.ContainsAny(commit, " \n\t") {
		return nil, fmt.Errorf("%s version --commit printed %q, not a commit", bin, out)
	}
	f, err := os.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	b := &Build{Commit: commit, Binary: bin, SHA256: hex.EncodeToString(h.Sum(nil))}
	return b, b.check()
}
