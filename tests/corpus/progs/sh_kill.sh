#!/bin/bash
# SPDX-License-Identifier: MIT
# A bash script launched directly that sends itself SIGABRT.
echo "script $(basename "$0") aborting"
kill -ABRT $$
echo "not reached"
