// Package codec encrypts Temporal payloads: a converter.PayloadCodec that
// seals every payload with AES-256-GCM under a key ring (the first key
// encrypts, every key decrypts, so keys rotate without a flag day), the
// data and failure converters that use it, and the HTTP codec endpoint
// (/encode, /decode) the Temporal Web UI and CLI call to show encrypted
// payloads — with access tokens redacted, so that the endpoint never shows
// a secret either.
//
// Sluice encrypts the payloads of its token-keeper workflows (package
// tokenkeeper): they carry KIS access tokens, and no secret may reach
// Temporal's history in clear.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Payload metadata of an encrypted payload. The names follow the Temporal
// samples' encryption codec, so that tools written for it recognise ours.
const (
	// MetadataEncoding is the metadata key naming a payload's encoding.
	MetadataEncoding = converter.MetadataEncoding
	// EncodingEncrypted is the encoding of a payload sealed by this codec.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key a payload was sealed with.
	MetadataKeyID = "encryption-key-id"
)

// nonceSize is GCM's standard nonce length; nonces are random.
const nonceSize = 12

// Codec is a converter.PayloadCodec sealing payloads with a Keyring.
type Codec struct {
	ring *Keyring
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec over ring, which must hold at least one key.
func New(ring *Keyring) (*Codec, error) {
	if ring == nil || len(ring.keys) == 0 {
		return nil, errors.New("creating payload codec: the key ring is empty")
	}
	return &Codec{ring: ring}, nil
}

// Keyring returns the codec's key ring.
func (c *Codec) Keyring() *Keyring { return c.ring }

// aad binds a sealed payload to its key id: moving a ciphertext under
// another id fails authentication.
func aad(id string) []byte { return []byte(EncodingEncrypted + "\x00" + id) }

// Encode seals every payload with the ring's primary key: the original
// payload (metadata and data) is marshalled and encrypted whole, so that
// not even its encoding shows.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	k := c.ring.primary()
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("encrypting payload %d: %w", i, err)
		}
		nonce := make([]byte, nonceSize, nonceSize+len(plain)+k.aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return payloads, fmt.Errorf("encrypting payload %d: reading a nonce: %w", i, err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:    []byte(k.id),
			},
			Data: k.aead.Seal(nonce, nonce, plain, aad(k.id)),
		}
	}
	return out, nil
}

// Decode opens every sealed payload with the key its metadata names and
// passes other payloads through unchanged. A payload sealed with a key the
// ring lacks, or altered, is an error naming the payload and key id,
// never its content.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		if id == "" {
			return payloads, fmt.Errorf("decrypting payload %d: no %s in its metadata", i, MetadataKeyID)
		}
		k := c.ring.byID[id]
		if k == nil {
			return payloads, fmt.Errorf("decrypting payload %d: it was encrypted with key id %q, which the key ring (%s) lacks", i, id, c.ring.describe())
		}
		data := p.GetData()
		if len(data) < nonceSize+k.aead.Overhead() {
			return payloads, fmt.Errorf("decrypting payload %d with key %q: %d bytes is too short for a sealed payload", i, id, len(data))
		}
		plain, err := k.aead.Open(nil, data[:nonceSize], data[nonceSize:], aad(id))
		if err != nil {
			return payloads, fmt.Errorf("decrypting payload %d with key %q: the payload was altered or sealed with another key of that id", i, id)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(plain, &orig); err != nil {
			return payloads, fmt.Errorf("decrypting payload %d with key %q: the plaintext is not a payload: %w", i, id, err)
		}
		out[i] = &orig
	}
	return out, nil
}

// DataConverter returns Temporal's default data converter with every
// payload sealed by c.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter returns a failure converter that also seals the
// message and stack trace of every failure (Temporal writes them in clear
// by default), so that an error can never carry a secret into history.
func (c *Codec) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          c.DataConverter(),
		EncodeCommonAttributes: true,
	})
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
