Blayer.0/attention/value.biasJ@.Ô“¼'•7",Âºox<Åf§ºãA¤¹’a¢¼Í”ã9£
—¼hü(<‡J»ùP:<’¼	°ƒ<€Ûb<ï&<