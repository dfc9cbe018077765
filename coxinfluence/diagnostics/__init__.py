"""Model checks beside influence: residuals and the proportional-hazards test (R's
``residuals.coxph``, ``cox.zph``, ``residuals.survreg``, crr's ``res``)."""
