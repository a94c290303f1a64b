"""Engine: selection, the pytest plugin that runs cases, and isolation."""
