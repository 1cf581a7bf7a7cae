"""One module per mutation, noun first (sourceCreate, ...), each with its own error type and code enum."""
