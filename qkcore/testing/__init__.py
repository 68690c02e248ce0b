"""Reusable test helpers for qkcore users and its own suite (hypothesis strategies)."""
