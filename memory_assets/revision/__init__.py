"""The revision layer: claims (with invalidation of changed sources), bi-temporal fact states, repairs."""
