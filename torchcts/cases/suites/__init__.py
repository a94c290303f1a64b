"""Hand-written suites, one module each; registered in torchcts.cases.registry.SUITES."""
