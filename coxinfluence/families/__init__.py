"""Family-specific parts above the generic audit: each model family's targets (what
``ci.influence(fit, target=...)`` can attribute), registered with the audit's dispatch
(:func:`coxinfluence.audit.targets.register_target`) when imported."""
