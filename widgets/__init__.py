"""Views over toycompiler artifacts: notebook widgets that read the recorded stages."""
