#!/bin/sh
# No-op coverage tool (see BUILD).
exit 0
