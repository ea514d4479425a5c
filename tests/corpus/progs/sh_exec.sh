#!/bin/sh
# SPDX-License-Identifier: MIT
# A sh script launched directly that execs a crashing program ($1).
echo "starting the worker"
exec "$@"
