package state

import (
	"errors"
	"strings"
)

// SecretText is every spelling of a backend's secrets (a password, a
// secret key): Scrub and ScrubText replace each, even where a malformed URL
// repeats one (in its path, say), so no message shows it.
type SecretText []string

// Scrub hides the secrets in an error from a driver or SDK.
func (secrets SecretText) Scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := secrets.ScrubText(err.Error())
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

func (secrets SecretText) ScrubText(text string) string {
	for _, secret := range secrets {
		text = strings.ReplaceAll(text, secret, "****")
	}
	return text
}

// SecretParam says whether a URL query parameter carries a credential.
func SecretParam(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "secret") || strings.Contains(n, "token")
}
