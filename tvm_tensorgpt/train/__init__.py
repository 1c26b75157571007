"""Training the generator from measured records."""
