"""What users give: graph documents, their rules and lifetimes, importers, the zoo and examples."""
