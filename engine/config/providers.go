package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Kafka's config providers (KIP-297, KIP-887) keep secrets out of
// configuration files: a value holding ${PROVIDER:PATH:KEY} or
// ${PROVIDER:KEY} is replaced, when the configuration is loaded, by what
// the provider finds. stoatctl knows Kafka's three:
//
//   - FileConfigProvider: ${file:/etc/kafka/secrets.properties:password} is
//     the key password of that properties file;
//   - EnvVarConfigProvider: ${env:KAFKA_PASSWORD} is the environment
//     variable;
//   - DirectoryConfigProvider: ${dir:/run/secrets:kafka-password} is the
//     content of the file kafka-password in that directory.
//
// As in Kafka, config.providers names the providers and
// config.providers.NAME.class gives each its class; when config.providers
// is not set, stoatctl knows them as file, env and dir, so that a value
// written for Kafka's usual declaration works without it.
const (
	ConfigProviders        = "config.providers"
	configProvidersPrefix  = ConfigProviders + "."
	fileProviderClass      = "org.apache.kafka.common.config.provider.FileConfigProvider"
	envProviderClass       = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
	directoryProviderClass = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
)

// providerRef is Kafka's ConfigTransformer pattern: ${provider:[path:]key}.
var providerRef = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// ResolveProviders returns values with every reference to a config
// provider replaced by what it refers to. An error names the key and the
// reference, never a value: what a reference resolves to is usually a
// secret.
func ResolveProviders(values map[string]string) (map[string]string, error) {
	classes, err := providerClasses(values)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(values)
	files := map[string]map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		v := values[key]
		if !strings.Contains(v, "${") || isProviderKey(key) {
			continue
		}
		var firstErr error
		resolved := providerRef.ReplaceAllStringFunc(v, func(ref string) string {
			m := providerRef.FindStringSubmatch(ref)
			name, path, k := m[1], m[3], m[4]
			class, ok := classes[name]
			if !ok {
				// Kafka leaves a reference to an undeclared provider as
				// it is.
				return ref
			}
			got, err := resolveRef(class, path, k, files)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("config %s: %s: %w", key, ref, err)
			}
			return got
		})
		if firstErr != nil {
			return nil, firstErr
		}
		out[key] = resolved
	}
	return out, nil
}

// providerClasses maps the declared provider names to their classes.
func providerClasses(values map[string]string) (map[string]string, error) {
	names, ok := values[ConfigProviders]
	if !ok {
		return map[string]string{"file": fileProviderClass, "env": envProviderClass, "dir": directoryProviderClass}, nil
	}
	out := map[string]string{}
	for n := range strings.SplitSeq(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		key := configProvidersPrefix + n + ".class"
		class := strings.TrimSpace(values[key])
		switch class {
		case fileProviderClass, envProviderClass, directoryProviderClass:
			out[n] = class
		case "":
			return nil, fmt.Errorf("config %s names provider %s but %s is not set", ConfigProviders, n, key)
		default:
			return nil, fmt.Errorf("config %s: %s is not a provider stoatctl has; it has %s, %s and %s", key, class, fileProviderClass, envProviderClass, directoryProviderClass)
		}
	}
	return out, nil
}

func resolveRef(class, path, key string, files map[string]map[string]string) (string, error) {
	switch class {
	case envProviderClass:
		v, ok := os.LookupEnv(key)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", key)
		}
		return v, nil
	case directoryProviderClass:
		if path == "" {
			return "", fmt.Errorf("want ${PROVIDER:DIRECTORY:FILE}")
		}
		if strings.ContainsAny(key, `/\`) || key == ".." {
			return "", fmt.Errorf("%q is not a file name in %s", key, path)
		}
		data, err := os.ReadFile(filepath.Join(path, key))
		if err != nil {
			return "", err
		}
		return string(data), nil
	}
	if path == "" {
		return "", fmt.Errorf("want ${PROVIDER:FILE:KEY}")
	}
	props, ok := files[path]
	if !ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		if props, err = ParseProperties(path, data); err != nil {
			return "", err
		}
		files[path] = props
	}
	v, ok := props[key]
	if !ok {
		return "", fmt.Errorf("%s sets no key %s", path, key)
	}
	return v, nil
}

// isProviderKey says key declares a config provider rather than being
// one the providers resolve.
func isProviderKey(key string) bool {
	return key == ConfigProviders || strings.HasPrefix(key, configProvidersPrefix)
}
