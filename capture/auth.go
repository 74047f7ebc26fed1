package capture

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dedupsim/dedupsim/internal/suggest"
)

// Auth is how a capture reaches a secured cluster, in franz-go's terms:
// kgo.DialTLS / kgo.DialTLSConfig for TLS, kgo.SASL with a mechanism of
// franz-go's sasl packages (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
type Auth struct {
	// DialTLS dials with TLS; implied by any of the TLS files.
	DialTLS bool
	// TLSCA is a PEM file of CAs to trust instead of the system's;
	// TLSCert and TLSKey a client certificate and key (PEM), both or none.
	TLSCA, TLSCert, TLSKey string
	// TLSServerName overrides the name checked in the broker certificate.
	TLSServerName string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 ("": none).
	SASLMechanism, SASLUser, SASLPass string
}

// SASLMechanisms are the names Auth.SASLMechanism takes (each mechanism's
// Name() in franz-go).
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// ClientOpts are the kgo options for a.
func (a Auth) ClientOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if a.TLSCA != "" || a.TLSCert != "" || a.TLSKey != "" || a.TLSServerName != "" {
		cfg, err := a.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	} else if a.DialTLS {
		opts = append(opts, kgo.DialTLS())
	}
	if a.SASLMechanism == "" {
		if a.SASLUser != "" || a.SASLPass != "" {
			return nil, errors.New("--sasl-user and --sasl-pass need --sasl-mechanism (" + strings.Join(SASLMechanisms, ", ") + ")")
		}
		return opts, nil
	}
	if a.SASLUser == "" {
		return nil, fmt.Errorf("--sasl-mechanism %s needs --sasl-user", a.SASLMechanism)
	}
	var m sasl.Mechanism
	switch strings.ToUpper(a.SASLMechanism) {
	case "PLAIN":
		m = plain.Auth{User: a.SASLUser, Pass: a.SASLPass}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: a.SASLUser, Pass: a.SASLPass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: a.SASLUser, Pass: a.SASLPass}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("--sasl-mechanism %q: unknown%s; want %s", a.SASLMechanism,
			suggest.Phrase(suggest.Closest(a.SASLMechanism, SASLMechanisms), func(s string) string { return s }), strings.Join(SASLMechanisms, ", "))
	}
	return append(opts, kgo.SASL(m)), nil
}

func (a Auth) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: a.TLSServerName}
	if a.TLSCA != "" {
		pem, err := os.ReadFile(a.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", a.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	if a.TLSCert != "" {
		c, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
