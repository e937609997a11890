#!/usr/bin/env bash
# Rebuild tests/fixtures/mediawiki-oauth.tar.xz: MediaWiki's OAuth extension (REL1_39) with the one
# PHP library its OAuth 1.0a flow loads (firebase/php-jwt), for the local wiki of the login tests.
# Needs git and network access to GitHub (CI and the tests do not: they use the committed archive).
# See tests/fixtures/mediawiki-oauth.SOURCE.md for what is in it and why.
#
#   scripts/build-mediawiki-oauth-fixture.sh [OAUTH_GIT_DIR [PHP_JWT_GIT_DIR]]
#
# The optional arguments are existing clones (bare or not) to read from instead of cloning.
set -euo pipefail

OAUTH_COMMIT=401393af97b23c460941af9b8db8e4a90145e2ba   # wikimedia/mediawiki-extensions-OAuth, branch REL1_39
PHP_JWT_TAG=v6.10.2                                      # firebase/php-jwt (composer.json: ^6.0.0)
OUT="$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/mediawiki-oauth.tar.xz"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
oauth_git=${1:-}
jwt_git=${2:-}
if [[ -z $oauth_git ]]; then
    git clone --quiet --bare --branch REL1_39 https://github.com/wikimedia/mediawiki-extensions-OAuth "$work/oauth.git"
    oauth_git=$work/oauth.git
fi
if [[ -z $jwt_git ]]; then
    git clone --quiet --bare https://github.com/firebase/php-jwt "$work/php-jwt.git"
    jwt_git=$work/php-jwt.git
fi

mkdir -p "$work/OAuth/vendor/firebase/php-jwt"
git --git-dir="$oauth_git" archive "$OAUTH_COMMIT" | tar -x -C "$work/OAuth"
# Not needed to run the extension: its PHPUnit tests and the JavaScript build tooling.
rm -rf "$work/OAuth/tests" "$work/OAuth/package-lock.json" "$work/OAuth/package.json" "$work/OAuth/Gruntfile.js"
git --git-dir="$jwt_git" archive "$PHP_JWT_TAG" src LICENSE | tar -x -C "$work/OAuth/vendor/firebase/php-jwt"
# Composer's autoloader is not available offline; this one loads firebase/php-jwt (PSR-4), the only
# library the OAuth 1.0a endpoints use. The OAuth 2 endpoints (league/oauth2-server) are not shipped.
cat > "$work/OAuth/vendor/autoload.php" <<'PHP'
<?php
// Written by scripts/build-mediawiki-oauth-fixture.sh in place of Composer's autoloader:
// the OAuth 1.0a flow needs only firebase/php-jwt (PSR-4, namespace Firebase\JWT).
spl_autoload_register( static function ( $class ) {
	$prefix = 'Firebase\\JWT\\';
	if ( strncmp( $class, $prefix, strlen( $prefix ) ) === 0 ) {
		$file = __DIR__ . '/firebase/php-jwt/src/' . str_replace( '\\', '/', substr( $class, strlen( $prefix ) ) ) . '.php';
		if ( is_file( $file ) ) {
			require $file;
		}
	}
} );
PHP
tar --sort=name --mtime='2024-01-01 00:00:00Z' --owner=0 --group=0 --numeric-owner \
    -C "$work" -cf - OAuth | xz -9e > "$OUT"
echo "wrote $OUT ($(stat -c %s "$OUT") bytes)"
