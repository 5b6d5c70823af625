"""From settings to one spec per component, once and in one direction: ``plan.stack.plan_stack``."""
