"""What every boundary applies to text from outside (a caller, a model, a tool, a configuration file): JSON
size and depth limits (`json_limits`), the text policy for characters that cannot be stored
(`text_policy`), the bound on YAML aliases (`yaml_aliases`), and the wording of validation problems by
field and reason (`validation_problems`)."""
