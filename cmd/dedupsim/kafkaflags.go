package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dedupsim/dedupsim/capture"
	"github.com/dedupsim/dedupsim/internal/exitcode"
)

// saslPassEnv stands in for --sasl-pass, which a process list shows.
const saslPassEnv = "DEDUPSIM_SASL_PASS"

// kafkaFlags are the flags that name a slice of a Kafka topic, shared by
// capture and analyze --from-kafka. TLS and SASL follow franz-go's kgo options
// (kgo.DialTLS, kgo.DialTLSConfig, kgo.SASL with franz-go's mechanisms).
type kafkaFlags struct {
	bootstrap, topic, partitions, start, end string
	readUncommitted                          bool
	auth                                     capture.Auth
	timeout                                  time.Duration
}

func (k *kafkaFlags) register(f *pflag.FlagSet) {
	f.StringVar(&k.bootstrap, "bootstrap", "", "Kafka bootstrap addresses, HOST:PORT[,HOST:PORT...]")
	f.StringVar(&k.topic, "topic", "", "the topic to read")
	f.StringVar(&k.partitions, "topic-partitions", "", "partitions to read, comma-separated (default: all)")
	f.StringVar(&k.start, "start", "earliest", "first record: earliest, an offset N, P:N,P:N per partition, or an RFC 3339 time (the first record stamped at or after it)")
	f.StringVar(&k.end, "end", "latest", "end, not read: latest (the end as the capture begins), an offset N, P:N,P:N, or an RFC 3339 time")
	f.BoolVar(&k.readUncommitted, "read-uncommitted", false, "read with read_uncommitted isolation (default read_committed, as Spark's Kafka source)")
	f.BoolVar(&k.auth.DialTLS, "dial-tls", false, "dial the brokers with TLS and the system's CAs (kgo.DialTLS)")
	f.StringVar(&k.auth.TLSCA, "tls-ca", "", "PEM file of the CAs to trust (kgo.DialTLSConfig; implies TLS)")
	f.StringVar(&k.auth.TLSCert, "tls-cert", "", "PEM client certificate, with --tls-key")
	f.StringVar(&k.auth.TLSKey, "tls-key", "", "PEM client key, with --tls-cert")
	f.StringVar(&k.auth.TLSServerName, "tls-server-name", "", "name to check in the broker certificate")
	f.StringVar(&k.auth.SASLMechanism, "sasl-mechanism", "", "kgo.SASL mechanism: "+strings.Join(capture.SASLMechanisms, ", "))
	f.StringVar(&k.auth.SASLUser, "sasl-user", "", "SASL user")
	f.StringVar(&k.auth.SASLPass, "sasl-pass", "", "SASL password (better: the environment variable "+saslPassEnv+")")
	f.DurationVar(&k.timeout, "kafka-timeout", 30*time.Second, "bound on one metadata or offset request [1ms, 24h]")
}

// source checks the flags and returns the slice they name.
func (k *kafkaFlags) source(verb string) (capture.Source, error) {
	bad := func(err error) (capture.Source, error) {
		return capture.Source{}, exitcode.Bad(fmt.Errorf("%s: %w", verb, err))
	}
	switch {
	case k.bootstrap == "" || k.topic == "":
		return bad(errors.New("--bootstrap and --topic are required"))
	case k.timeout < time.Millisecond || k.timeout > 24*time.Hour:
		return bad(fmt.Errorf("--kafka-timeout %v: out of range, want [1ms, 24h]", k.timeout))
	}
	s := capture.Source{Topic: k.topic, ReadUncommitted: k.readUncommitted, Timeout: k.timeout}
	for _, b := range strings.Split(k.bootstrap, ",") {
		if b = strings.TrimSpace(b); b == "" || strings.ContainsAny(b, " \t") || !strings.Contains(b, ":") {
			return bad(fmt.Errorf("--bootstrap %q: want HOST:PORT[,HOST:PORT...]", k.bootstrap))
		}
		s.Brokers = append(s.Brokers, b)
	}
	var err error
	if s.Partitions, err = capture.ParsePartitions(k.partitions); err != nil {
		return bad(err)
	}
	if s.Start, err = capture.ParseBound("start", k.start, true); err != nil {
		return bad(err)
	}
	if s.End, err = capture.ParseBound("end", k.end, false); err != nil {
		return bad(err)
	}
	auth := k.auth
	if auth.SASLPass == "" {
		auth.SASLPass = os.Getenv(saslPassEnv)
	}
	if s.ClientOpts, err = auth.ClientOpts(); err != nil {
		return bad(err)
	}
	return s, nil
}

// kafkaExit gives a capture or a Kafka read its exit status: 2 for bad
// input (the flags, a value that cannot be captured, the output files),
// 1 for anything else (the cluster, an interruption).
func kafkaExit(verb string, err error) error {
	if err == nil {
		return nil
	}
	var ie *capture.InputError
	var re *capture.RecordError
	if errors.As(err, &ie) || errors.As(err, &re) {
		return exitcode.Bad(fmt.Errorf("%s: %w", verb, err))
	}
	return &exitcode.Error{Code: 1, Err: fmt.Errorf("%s: %w", verb, err)}
}
