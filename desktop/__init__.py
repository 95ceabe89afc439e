"""Evidence Desk's Qt review desk. Holds no business rules: it renders what core returns."""
