"""influence_functions"""
