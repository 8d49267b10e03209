#!/bin/sh
# Installs the Atrium wheel found in WHEELS, with its dependencies, into a new virtual
# environment VENV, whose bin/atrium is then the command to run. The image's runtime stage
# runs this, and so does tests/production/test_deploy_image.py. PYTHON names the interpreter
# the environment is made from (default python3). Its own pip installs into the environment
# (--python): the pip `venv` puts there is the one bundled with the interpreter's release,
# often far older and twice as slow to resolve Atrium's dependencies.
set -eu
venv=$1
wheels=$2
"${PYTHON:-python3}" -m venv "$venv"
"${PYTHON:-python3}" -m pip --python "$venv/bin/python" install --disable-pip-version-check \
  "$wheels"/atrium-*.whl
