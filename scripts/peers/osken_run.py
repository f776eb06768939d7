"""Starts os-ken (which in 4.x ships no osken-manager command) with one app.

Usage: python osken_run.py PORT APP.py
"""
import sys

from os_ken import cfg
from os_ken.base.app_manager import AppManager


def main():
    port, app = sys.argv[1], sys.argv[2]
    cfg.CONF(args=["--ofp-tcp-listen-port", port, "--ofp-listen-host", "127.0.0.1"], project="os_ken")
    AppManager.run_apps([app])


if __name__ == "__main__":
    main()
