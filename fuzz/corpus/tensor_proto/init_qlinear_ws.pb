BwsJ
ף<