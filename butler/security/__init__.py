"""Who may talk to a butler: the owner's token, per-session capabilities, Host/Origin checks."""
