"""Configuration: the models a file is read into, reading it (Stepwise's format or a Higress plugin's),
checking it, the Lambda settings read from the environment, and the Step Functions history cap the
profiles' limits are checked against."""
