B
gelu_sqrt2Jóµ?