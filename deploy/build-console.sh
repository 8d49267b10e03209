#!/bin/sh
# Builds the console into web/dist of the source tree given (default: the current directory):
# its npm packages exactly as web/package-lock.json pins them, then the build (Vite's manifest
# and hashed assets, the persisted-query manifest, the kit's templates for the server, the
# assets' compressed forms), as `make web` does. The console is not type-checked here: `make web`
# (and so `make test`) does that before every build. The image's console stage runs this, and
# so does tests/production/test_deploy_image.py, which serves the result.
set -eu
cd "${1:-.}/web"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
