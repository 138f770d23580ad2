"""Loaded by every Python process of a reliability trial's job (this folder comes first on its
PYTHONPATH): installs the write audit (``write_audit.py``) when DOCKETEER_AUDIT_LOG is set."""

import write_audit

write_audit.install_from_environment()
