"""Attack tests: each one the attack that succeeded once, asserting that it now fails."""
