"""Measured data: collection on host profiles, ingest of users' MetaSchedule logs, statistics."""
