#!/bin/sh
# Installs the Atrium wheel found in WHEELS, with its dependencies, into a new virtual
# environment VENV, whose bin/atrium is then the command to run. The image's runtime stage
# runs this, and so does tests/production/test_deploy_image.py. PYTHON names the interpreter
# the environment is made from (default python3).
set -eu
venv=$1
wheels=$2
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check "$wheels"/atrium-*.whl
