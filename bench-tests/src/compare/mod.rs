//! The comparison of two bundles of one kind, or of one A/B bundle's variants.
