"""ptxpy.transpiler: source -> typed tree -> SSA -> passes -> registers -> PTX."""
