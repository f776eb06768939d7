"""Starts os-ken 1.4.1 (the last os-ken release that ships the REST apps
rest_topology and ofctl_rest) the way osken-manager does, with its
arguments. 1.4.1's wsgi module imports eventlet.wsgi.ALREADY_HANDLED, a
constant newer eventlet (the only one that runs on Python 3.11) dropped;
only os-ken's websocket path uses it, so a placeholder is enough.
"""
import sys

import eventlet.wsgi

if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):
    eventlet.wsgi.ALREADY_HANDLED = object()

from os_ken.cmd.manager import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
