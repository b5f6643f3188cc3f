package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
)

// This file reads a stack's last checkpoint straight from the backend
// (backend.go, package state: file://, postgres:// or s3://), without the
// Pulumi CLI, for the fast no-op up and drift (fast.go). Secret values are
// decrypted with the stack's passphrase into memory only: they are compared,
// never written or printed.

// stateResource is one resource of a checkpoint, as the fast path needs it.
type stateResource struct {
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

// fullCheckpoint is the part of a stack file the fast path reads.
type fullCheckpoint struct {
	Checkpoint struct {
		Latest *struct {
			SecretsProviders  *stateSecretsProvider `json:"secrets_providers"`
			Resources         []stateResource       `json:"resources"`
			PendingOperations []json.RawMessage     `json:"pending_operations"`
		} `json:"latest"`
	} `json:"checkpoint"`
}

// stateSecretsProvider is how a checkpoint's secrets are encrypted.
type stateSecretsProvider struct {
	Type  string          `json:"type"`
	State json.RawMessage `json:"state"`
}

// secret is a value the state holds encrypted, decrypted into memory: the
// comparison sees its value, the report only "[secret]".
type secret struct{ value any }

// parseFullCheckpoint parses a checkpoint (readStackState), numbers as
// float64 as the engine's events give them.
func parseFullCheckpoint(data []byte) (*fullCheckpoint, error) {
	var c fullCheckpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// readPassphrase is the stack's secrets passphrase, from the same place the
// engine gives the CLI (passphraseEnv). The CLI trims a passphrase file.
func readPassphrase() (string, error) {
	env, err := passphraseEnv()
	if err != nil {
		return "", err
	}
	if v, ok := env["PULUMI_CONFIG_PASSPHRASE"]; ok {
		return v, nil
	}
	b, err := os.ReadFile(env["PULUMI_CONFIG_PASSPHRASE_FILE"])
	if err != nil {
		return "", fmt.Errorf("reading the secrets passphrase: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
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
