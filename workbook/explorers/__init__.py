"""Per-chapter visuals, explorers and predictions."""
