"""Measuring retrieval quality: `cra evaluate`, case trees, the nightly job."""
