"""One training loop for every head in the project (DREAM, MEAT, SEED, FMDA, ...)."""
