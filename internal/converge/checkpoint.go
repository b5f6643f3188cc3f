package converge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
)

// This file reads a stack's last checkpoint, as the engine reads it straight
// from the backend (its backend.go, package state: file://, postgres:// or
// s3://) without the Pulumi CLI, for the fast no-op up and drift (the
// engine's fast.go). Secret values are decrypted with the stack's passphrase into
// memory only: they are compared, never written or printed.

// StateResource is one resource of a checkpoint, as the fast path needs it.
type StateResource struct {
	URN                string         `json:"urn"`
	Custom             bool           `json:"custom"`
	Delete             bool           `json:"delete"`
	Type               string         `json:"type"`
	ID                 string         `json:"id"`
	Inputs             map[string]any `json:"inputs"`
	Outputs            map[string]any `json:"outputs"`
	Provider           string         `json:"provider"`
	PendingReplacement bool           `json:"pendingReplacement"`
}

// Checkpoint is the part of a stack file the fast path reads.
type Checkpoint struct {
	Checkpoint struct {
		Latest *struct {
			SecretsProviders  *SecretsProvider  `json:"secrets_providers"`
			Resources         []StateResource   `json:"resources"`
			PendingOperations []json.RawMessage `json:"pending_operations"`
		} `json:"latest"`
	} `json:"checkpoint"`
}

// SecretsProvider is how a checkpoint's secrets are encrypted.
type SecretsProvider struct {
	Type  string          `json:"type"`
	State json.RawMessage `json:"state"`
}

// secret is a value the state holds encrypted, decrypted into memory: the
// comparison sees its value, the report only "[secret]".
type secret struct{ value any }

// ParseCheckpoint parses a checkpoint (the engine's readStackState),
// numbers as float64 as the engine's events give them.
func ParseCheckpoint(data []byte) (*Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// passphraseCrypter is the crypter of a passphrase secrets provider whose
// state is {"salt": "v1:<salt>:<encrypted check value>"}: the key is derived
// from the passphrase and salt, and must decrypt the check value, so a wrong
// passphrase is an error rather than garbage.
func passphraseCrypter(ctx context.Context, providerType string, state json.RawMessage, phrase string) (config.Crypter, error) {
	if providerType != "passphrase" {
		return nil, fmt.Errorf("secrets provider %q is not a passphrase", providerType)
	}
	var st struct {
		Salt string `json:"salt"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, fmt.Errorf("secrets provider state: %w", err)
	}
	parts := strings.SplitN(st.Salt, ":", 3)
	if len(parts) != 3 || parts[0] != "v1" {
		return nil, errors.New("secrets provider state: the salt is not in v1 form")
	}
	salt, err := base64.StdEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("secrets provider state: %w", err)
	}
	c := config.NewSymmetricCrypterFromPassphrase(phrase, salt)
	if _, err := c.DecryptValue(ctx, parts[2]); err != nil {
		return nil, errors.New("the passphrase does not open the stack's secrets")
	}
	return c, nil
}

// decryptSecrets returns v with every secret envelope replaced by a secret
// holding its decrypted value. It derives the key (a deliberately slow
// PBKDF2) only when there is something to decrypt: newCrypter is called at
// most once.
func decryptSecrets(ctx context.Context, v any, newCrypter func() (config.Crypter, error)) (any, error) {
	var crypter config.Crypter
	var walk func(any) (any, error)
	walk = func(v any) (any, error) {
		switch x := v.(type) {
		case map[string]any:
			if x[sig.Key] == sig.Secret {
				if plain, ok := x["plaintext"].(string); ok {
					var val any
					if err := json.Unmarshal([]byte(plain), &val); err != nil {
						return nil, fmt.Errorf("a secret's plaintext: %w", err)
					}
					return secret{val}, nil
				}
				ct, _ := x["ciphertext"].(string)
				if crypter == nil {
					var err error
					if crypter, err = newCrypter(); err != nil {
						return nil, err
					}
				}
				plain, err := crypter.DecryptValue(ctx, ct)
				if err != nil {
					return nil, errors.New("a secret of the state does not decrypt")
				}
				var val any
				if err := json.Unmarshal([]byte(plain), &val); err != nil {
					return nil, errors.New("a secret of the state does not decode")
				}
				return secret{val}, nil
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				ne, err := walk(e)
				if err != nil {
					return nil, err
				}
				out[k] = ne
			}
			return out, nil
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				ne, err := walk(e)
				if err != nil {
					return nil, err
				}
				out[i] = ne
			}
			return out, nil
		}
		return v, nil
	}
	return walk(v)
}

// stateCrypter decrypts the secrets of a checkpoint with the stack's
// passphrase (passphrase reads it), made only when a secret is met.
func stateCrypter(ctx context.Context, sp *SecretsProvider, passphrase func() (string, error)) func() (config.Crypter, error) {
	return func() (config.Crypter, error) {
		if sp == nil {
			return nil, errors.New("the state names no secrets provider")
		}
		phrase, err := passphrase()
		if err != nil {
			return nil, err
		}
		return passphraseCrypter(ctx, sp.Type, sp.State, phrase)
	}
}

// SecretValue is how engine events show a secret.
const SecretValue = "[secret]"

// IsSecret reports whether an event value is a secret: "[secret]", or the
// engine's secret envelope ({"4dabf18193072939515e22adb298388d":
// "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "[secret]"}).
func IsSecret(v any) bool {
	switch x := v.(type) {
	case string:
		return x == SecretValue
	case map[string]any:
		return x[sig.Key] == sig.Secret
	}
	return false
}
