"""One module per model API the fake server impersonates."""
