package converge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
)

func TestDecryptSecrets(t *testing.T) {
	ctx := context.Background()
	c := config.NewSymmetricCrypter(bytes.Repeat([]byte{7}, config.SymmetricCrypterKeyBytes))
	ct, err := c.EncryptValue(ctx, `"hunter2"`)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"a": []any{map[string]any{sig.Key: sig.Secret, "ciphertext": ct}}, "b": "plain"}
	calls := 0
	out, err := decryptSecrets(ctx, in, func() (config.Crypter, error) { calls++; return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	got := out.(map[string]any)["a"].([]any)[0]
	if got != (secret{"hunter2"}) || calls != 1 {
		t.Fatalf("decrypted %#v with %d key derivations", got, calls)
	}
	// Nothing secret: the slow key derivation never runs.
	if _, err := decryptSecrets(ctx, map[string]any{"b": "plain"}, func() (config.Crypter, error) { calls++; return c, nil }); err != nil || calls != 1 {
		t.Fatalf("key derived for a state without secrets (%v)", err)
	}
	other := config.NewSymmetricCrypter(bytes.Repeat([]byte{8}, config.SymmetricCrypterKeyBytes))
	if _, err := decryptSecrets(ctx, in, func() (config.Crypter, error) { return other, nil }); err == nil {
		t.Fatal("a secret decrypted with the wrong key")
	}
}

func TestPassphraseCrypter(t *testing.T) {
	ctx := context.Background()
	salt := []byte("0123456789abcdef")
	check, _ := config.NewSymmetricCrypterFromPassphrase("right", salt).EncryptValue(ctx, "pulumi")
	state, _ := json.Marshal(map[string]string{"salt": "v1:" + base64Std(salt) + ":" + check})
	if _, err := passphraseCrypter(ctx, "passphrase", state, "right"); err != nil {
		t.Fatalf("the right passphrase: %v", err)
	}
	if _, err := passphraseCrypter(ctx, "passphrase", state, "wrong"); err == nil {
		t.Fatal("a wrong passphrase opened the secrets")
	}
	if _, err := passphraseCrypter(ctx, "awskms", state, "right"); err == nil {
		t.Fatal("a KMS provider taken for a passphrase")
	}
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
