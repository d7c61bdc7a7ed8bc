"""Measurement: sampling loop, clocks and counters."""
