#!/bin/sh
# Builds Atrium's wheel from the source tree SRC into the directory OUT: the packages
# pyproject.toml names, with their package data (migrations, templates, CRDs). Its
# dependencies are not included; install-wheel.sh installs them. The image's wheel stage runs
# this, and so does tests/production/test_deploy_image.py. PYTHON names the interpreter
# (default python3).
set -eu
src=$1
out=$2
"${PYTHON:-python3}" -m pip wheel --no-deps --wheel-dir "$out" "$src"
